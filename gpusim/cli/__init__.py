"""The `gpusim` command line."""
