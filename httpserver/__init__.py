"""The HTTP/1.1 server: the request parser, one connection, the selector and workers, the systemd glue."""
