"""``python -m ejb``: the ``ejb`` command."""

from ejb.cli import app

app()
