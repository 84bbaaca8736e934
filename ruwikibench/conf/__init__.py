"""The run config: its model (config.py), read from YAML (loader.py), the secrets it names kept out of every
file and line (secrets.py), and the options models of the built-in stages (builtin_options.py)."""
