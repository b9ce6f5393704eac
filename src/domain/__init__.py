"""Rules and persistence. Imports neither handlers nor workers."""
