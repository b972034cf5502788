"""Events out: what changed in the data, told to webhooks and by email (docs/events.md).

`diff` finds what changed (pure), `payloads` writes the events and their renderings (pure), `config`
reads the --notify file, `store` keeps the last-seen record and the deliveries (SQLite), `email` sends
mail, `notifier` runs it all beside the server.
"""
