"""The bundled Slack channel: an app over Socket Mode or HTTP events, and the Web API."""
