"""Moving an account's cards out and back in: ZIP exports (exports), imports of other services'
exports (imports), the restore of our own (restore), and the archive format they share (archive)."""
