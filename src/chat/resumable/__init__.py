"""Resumable answers: produced by a Durable Object (durable_object) whoever is reading,
kept in its SQLite storage, and replayed to any number of readers from any event on. The
Worker's side of it (client) passes turns and readers on through the binding."""
