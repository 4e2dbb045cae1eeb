"""Chat channels: the adapter contract, routing, who may talk, durable inbound and outbound.

A channel is a plugin (``PluginApi.register_channel``); the built-in ones are bundled plugins
registered the same way. This package knows nothing of agent runs: the gateway composes it with
the runtime (``usecases/chat/``).
"""
