"""The WebSub hub's durable state (the hub itself: hub.py)."""
