"""The HTTP answers: precomputed payloads and their validators, feeds, snapshots, the response seam."""
