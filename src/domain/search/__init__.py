"""Full-text search on SQLite FTS5 or PostgreSQL tsvectors: ``words`` folds text the same way
for both, ``index`` writes a card's words, ``query`` parses ``q``, ``matching`` turns a parsed
query into conditions, ``highlights`` shows where the words occur."""
