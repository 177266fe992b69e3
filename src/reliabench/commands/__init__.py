"""One module per CLI sub-command; each exposes ``command`` (a ``click.Command``)."""

__all__: list[str] = []
