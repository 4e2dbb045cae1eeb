"""From a committed chat message to its reply: access, pairing, owner commands, debounce, routing,
media, the run, and the reply into the outbox (``service.ChannelService`` composes them)."""
