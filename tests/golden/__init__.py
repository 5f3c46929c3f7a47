"""Golden outputs of every command on the fixtures (see ``cases.py``)."""
