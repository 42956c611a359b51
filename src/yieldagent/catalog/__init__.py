"""The catalog: chains, tokens and protocols the service supports."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from yieldagent.domain.catalog import Catalog, parse_catalog


@cache
def load_catalog() -> Catalog:
    """The catalog shipped in the package (``registry.json``), read once."""
    text = files(__name__).joinpath("registry.json").read_text(encoding="utf-8")
    return parse_catalog(json.loads(text))
