"""One answer's stream: the model's stream started (upstream), its rules while it flows
(lifecycle: pings, idle and total timeouts, the terminal event; pure), and the plumbing
that drives it from the JS streams (relay and relay.mjs for streamed answers, collect for
answers sent whole)."""
