"""Test suite (a package, so that importlib mode names test modules tests.unit.ejb.* and not ejb.*)."""
