"""Conversations of /v1/conversations: their Durable Object (durable_object)."""
