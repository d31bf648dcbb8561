"""``assay config``: every table of config.toml as its owner declares it, and the user's file
checked against them."""

from __future__ import annotations

import typer
from rich.text import Text

from assay.cli.common import out
from assay.config import config_path


def config() -> None:
    """The tables of config.toml: each key's type, range, default and meaning, as the code
    that reads it declares it (the scheduler, a probe, the analysis); then whether your file
    ($ASSAY_CONFIG, else ~/.config/assay/config.toml) holds to them (exit 2 when it does not).
    """
    from rich.table import Table  # not for --help either

    from assay.config.describe import describe  # pydantic: not for --help
    from assay.run.configfile import load_config, schema

    for doc in describe(schema()):
        # Text throughout: "[slurm]" is no markup
        table = Table(title=Text(f"{doc.title}  {doc.help}"), title_justify="left")
        for col in ("key", "type", "range", "default", "meaning"):
            table.add_column(col)
        for key in doc.keys:
            by = f" (declared by {key.owner})" if key.owner != doc.owner else ""
            cells = (key.key, key.kind, key.range, key.default, key.help + by)
            table.add_row(*(Text(c) for c in cells))
        table.caption, table.caption_justify = Text(f"declared by {doc.owner}"), "left"
        out.print(table)
    path = config_path()
    if not path.exists():
        out.print(Text(f"{path}: none (every default holds)"))
        return
    load_config(path)  # a ConfigError names every problem (exit 2)
    out.print(Text(f"{path}: holds to every table"))


def register(app: typer.Typer) -> None:
    app.command("config")(config)
