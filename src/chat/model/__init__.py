"""What the Worker asks of Workers AI: the model catalog the Worker and the emulator obey
(catalog) and the AI.run input built from a checked turn and the configuration (call).
Pure Python."""
