"""Storage: SQLModel tables, the engine, migrations and one store per aggregate."""
