"""File readers: each format Cairn reads, as block text (readers/formats.py is the table). Imports
no Cairn app, so the store (corpus) and the sources stand on it."""
