"""Moving from OpenClaw: read its state (source), map its config (config_map), write Homarus state (apply)."""
