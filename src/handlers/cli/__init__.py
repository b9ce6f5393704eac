"""The ``cardvault`` command's imports: restoring our own export, and importing another service's."""
