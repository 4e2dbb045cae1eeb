"""The bundled Discord channel: a bot on the Gateway (v10) and the REST API."""
