"""Storage: SQLAlchemy models for Liz's tables, engines for SQLite and PostgreSQL, migrations.

`schema.prisma` at the repository root is the declared data contract; the models in
:mod:`liz.db.tables` follow it (a test fails when they drift) and Alembic migrations in
``liz/db/migrations`` create it. Data functions take a session; they never make one.
"""
