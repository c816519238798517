"""Abuse protection: which requests spend a client's budget and under which key (keys,
pure), and the one call to Workers' Rate Limiting binding (binding)."""
