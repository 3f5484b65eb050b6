"""Small data files shipped with the package (see README in this folder)."""
