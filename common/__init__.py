"""The ground every app stands on: errors and their HTTP answers, the API's parsers, server-sent
events, reading settings from the environment, and the Postgres backend. Imports no Cairn app."""
