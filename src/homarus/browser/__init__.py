"""The agent's browser: headless Chromium driven with Playwright (egress through the SSRF policy,
accessibility snapshots with element refs, one profile per agent, a tab per session)."""
