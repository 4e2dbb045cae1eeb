"""The bundled WhatsApp channel: a business number on the WhatsApp Business Cloud API."""
