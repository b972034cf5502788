"""The HTTP answers: precomputed payloads and their validators, feeds, the OpenAPI document, snapshots."""
