"""The application layer: what the assistant does, whoever asks.

Each module is one use case — accept, run and finish a run (``runs``), take up the runs a crash
left (``recovery``), a webhook's run (``webhooks``), a chat message from a channel to its reply
(``chat/``), a cron job's run (``cron``), the heartbeat (``heartbeat``) — and says in a small
``Protocol`` exactly which services it uses. The gateway (the edge: WebSocket, HTTP, methods)
parses and authorises a request, calls one use case with itself as those services, and shapes
the answer; nothing here imports the gateway or knows a wire format.
"""
