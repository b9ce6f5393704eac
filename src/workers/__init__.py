"""Dramatiq actors: asynchronous work whose database row is the truth. Imports domain only."""
