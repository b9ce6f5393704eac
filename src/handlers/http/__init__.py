"""The HTTP edge's glue: the app factory, and everything that plugs into Connexion and Starlette."""
