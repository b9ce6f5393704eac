"""Moving an account's cards out and back in: ZIP exports, imports, and the archive format they share."""
