"""An account's tags: the rules a name follows, their counts, and account-wide rename, merge, delete."""
