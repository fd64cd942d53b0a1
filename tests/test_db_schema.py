"""schema.prisma is the data contract: the SQLAlchemy models must say exactly the same.

Compared: table names, column names, nullability, primary keys, unique keys and
index column lists. Relation fields (a model type or a list) are not columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Index, MetaData, UniqueConstraint

import liz.db.all_tables
from liz.db.tables import Base

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema.prisma"

_BLOCK = re.compile(r"^\s*(model|enum)\s+(\w+)\s*\{(.*?)^\s*\}", re.S | re.M)
# A type may carry arguments with one level of nesting: Unsupported("vector(1536)").
_FIELD = re.compile(r"^(\w+)\s+(\w+(?:\((?:[^()]|\([^()]*\))*\))?)(\[\])?(\?)?(.*)$")
_NAMES = re.compile(r"\[([^\]]*)\]")
_MAP = re.compile(r"""@map\(\s*(?:name:\s*)?"([^"]+)"\s*\)""")
_TABLE_MAP = re.compile(r"""^@@map\(\s*(?:name:\s*)?"([^"]+)"\s*\)""")


@dataclass
class Table:
    """What the drift test compares about one table."""

    columns: dict[str, bool] = field(default_factory=dict)  # name -> nullable
    primary_key: tuple[str, ...] = ()
    unique: set[tuple[str, ...]] = field(default_factory=set)
    indexes: set[tuple[str, ...]] = field(default_factory=set)


def _strip_comment(line: str) -> str:
    return re.sub(r"//.*$", "", line).strip()


def _field_list(text: str, column_names: dict[str, str]) -> tuple[str, ...]:
    found = _NAMES.search(text)
    if found is None:
        raise ValueError(f"schema.prisma: no [field, ...] list in {text!r}")
    names = [re.sub(r"\(.*\)$", "", n.strip()) for n in found.group(1).split(",") if n.strip()]
    return tuple(column_names.get(name, name) for name in names)


def parse_prisma(text: str) -> dict[str, Table]:
    """Tables in a Prisma schema, keyed by their database name (``@@map`` respected)."""
    blocks = _BLOCK.findall(text)
    type_names = {name for kind, name, _ in blocks if kind == "model"}
    tables: dict[str, Table] = {}
    for kind, model_name, body in blocks:
        if kind != "model":
            continue
        table, table_name = Table(), model_name
        column_names: dict[str, str] = {}
        block_lines: list[str] = []
        for raw in body.splitlines():
            line = _strip_comment(raw)
            if not line:
                continue
            if line.startswith("@@"):
                block_lines.append(line)
                continue
            parsed = _FIELD.match(line)
            if parsed is None:
                raise ValueError(f"schema.prisma: cannot read field line {line!r}")
            name, type_name, is_list, optional, attributes = parsed.groups()
            if is_list or type_name in type_names:
                continue  # a relation, not a column
            mapped = _MAP.search(attributes)
            column = mapped.group(1) if mapped else name
            column_names[name] = column
            table.columns[column] = optional is not None
            if re.search(r"@id\b", attributes):
                table.primary_key = (column,)
            if re.search(r"@unique\b", attributes):
                table.unique.add((column,))
        for line in block_lines:
            if renamed := _TABLE_MAP.match(line):
                table_name = renamed.group(1)
            elif line.startswith("@@id"):
                table.primary_key = _field_list(line, column_names)
            elif line.startswith("@@unique"):
                table.unique.add(_field_list(line, column_names))
            elif line.startswith("@@index"):
                table.indexes.add(_field_list(line, column_names))
        tables[table_name] = table
    return tables


def tables_from_metadata(metadata: MetaData) -> dict[str, Table]:
    tables: dict[str, Table] = {}
    for sa_table in metadata.tables.values():
        table = Table(
            columns={column.name: bool(column.nullable) for column in sa_table.columns},
            primary_key=tuple(column.name for column in sa_table.primary_key.columns),
        )
        for column in sa_table.columns:
            if column.unique:
                table.unique.add((column.name,))
        for constraint in sa_table.constraints:
            if isinstance(constraint, UniqueConstraint):
                table.unique.add(tuple(column.name for column in constraint.columns))
        for index in sa_table.indexes:
            columns = tuple(column.name for column in index.columns)
            (table.unique if index.unique else table.indexes).add(columns)
            if isinstance(index, Index) and not index.columns:
                raise ValueError(f"{sa_table.name}: index {index.name} has no plain columns")
        tables[sa_table.name] = table
    return tables


def drift(prisma: dict[str, Table], models: dict[str, Table]) -> list[str]:
    """Every difference, one readable line each; empty when they agree."""
    lines = [
        f"table {name}: in schema.prisma, not in the models"
        for name in prisma.keys() - models.keys()
    ]
    lines += [
        f"table {name}: in the models, not in schema.prisma"
        for name in models.keys() - prisma.keys()
    ]
    for name in sorted(prisma.keys() & models.keys()):
        want, have = prisma[name], models[name]
        for column in sorted(want.columns.keys() - have.columns.keys()):
            lines.append(f"{name}.{column}: in schema.prisma, not in the models")
        for column in sorted(have.columns.keys() - want.columns.keys()):
            lines.append(f"{name}.{column}: in the models, not in schema.prisma")
        for column in sorted(want.columns.keys() & have.columns.keys()):
            if want.columns[column] != have.columns[column]:
                lines.append(
                    f"{name}.{column}: schema.prisma says "
                    f"{'optional' if want.columns[column] else 'required'}, the models say "
                    f"{'nullable' if have.columns[column] else 'not null'}"
                )
        if want.primary_key != have.primary_key:
            lines.append(
                f"{name}: primary key {list(want.primary_key)} in schema.prisma, "
                f"{list(have.primary_key)} in the models"
            )
        for kind in ("unique", "indexes"):
            wanted, had = getattr(want, kind), getattr(have, kind)
            for columns in sorted(wanted - had):
                lines.append(f"{name}: {kind} {list(columns)} in schema.prisma, not in the models")
            for columns in sorted(had - wanted):
                lines.append(f"{name}: {kind} {list(columns)} in the models, not in schema.prisma")
    return sorted(lines)


def test_models_match_schema_prisma() -> None:
    assert liz.db.all_tables.Base is Base
    prisma = parse_prisma(SCHEMA_PATH.read_text(encoding="utf-8"))
    differences = drift(prisma, tables_from_metadata(Base.metadata))
    assert not differences, "schema.prisma and the models differ:\n  " + "\n  ".join(differences)


def test_schema_prisma_declares_liz_core_tables() -> None:
    prisma = parse_prisma(SCHEMA_PATH.read_text(encoding="utf-8"))
    memory, tweet = prisma["Memory"], prisma["Tweet"]
    assert list(memory.columns) == [
        "id", "userId", "agentId", "roomId", "content", "type", "generator", "createdAt"
    ]  # fmt: skip
    assert memory.indexes == {("roomId",), ("userId", "agentId", "createdAt"), ("type",)}
    assert tweet.primary_key == ("id",)
    assert {c for c, optional in tweet.columns.items() if optional} == {
        "conversationId", "inReplyToId", "permanentUrl"
    }  # fmt: skip


def test_drift_report_names_each_difference() -> None:
    edited = (
        SCHEMA_PATH.read_text(encoding="utf-8")
        .replace("  @@index([type])\n", "")
        .replace("  username       String\n", "  username       String?\n")
        .replace("  permanentUrl   String?\n", "  permanentUrl   String?\n  lang String\n")
    )
    differences = drift(parse_prisma(edited), tables_from_metadata(Base.metadata))
    assert differences == [
        "Memory: indexes ['type'] in the models, not in schema.prisma",
        "Tweet.lang: in schema.prisma, not in the models",
        "Tweet.username: schema.prisma says optional, the models say not null",
    ]


def test_parser_reads_maps_relations_and_compound_keys() -> None:
    text = """
    model Fact {
      id      String  @id
      userId  String  @map("user_id")
      hash    String  @unique
      vec     Unsupported("vector(3)")?
      history FactHistory[]
      @@unique([userId, hash])
      @@index([userId(sort: Desc)])
      @@map("facts")
    }
    model FactHistory {
      factId String
      seq    Int
      fact   Fact @relation(fields: [factId], references: [id])
      @@id([factId, seq])
    }
    """
    tables = parse_prisma(text)
    assert tables["facts"] == Table(
        columns={"id": False, "user_id": False, "hash": False, "vec": True},
        primary_key=("id",),
        unique={("hash",), ("user_id", "hash")},
        indexes={("user_id",)},
    )
    assert tables["FactHistory"].primary_key == ("factId", "seq")
    assert list(tables["FactHistory"].columns) == ["factId", "seq"]
