"""`kraftlog certs init|issue`: a test CA and the node and client
certificates it signs, as PEM files for ssl.keystore.location and
ssl.truststore.location (security/certs.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from security.certs import init_ca, issue

DirOption = Annotated[Path, typer.Option("--dir", help="The CA's directory.", show_default=False)]

certs_app = typer.Typer(help="Make a test CA and the certificates of nodes and clients (PEM).",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(certs_app, name="certs")


@certs_app.command("init")
def init(directory: DirOption,
         days: Annotated[int, typer.Option("--days", help="Validity of the CA certificate.")] = 3650) -> None:
    """Create a CA (ca.key, ca.pem) in --dir; an existing CA is kept."""
    cert = init_ca(directory, days)
    typer.echo(f"CA created: {cert} (ssl.truststore.location); keep {directory / 'ca.key'} private")


@certs_app.command("issue")
def issue_cert(
    directory: DirOption,
    name: Annotated[str, typer.Option("--name", help="The certificate's CN and file name (NAME.pem).",
                                      show_default=False)],
    host: Annotated[Optional[list[str]], typer.Option(
        "--host", help="A host name or IP address the node is reached at (repeatable).", show_default=False)] = None,
    client: Annotated[bool, typer.Option("--client", help="A client certificate (connects only).")] = False,
    days: Annotated[int, typer.Option("--days", help="Validity of the certificate.")] = 365,
) -> None:
    """Issue a certificate signed by the CA in --dir: NAME.pem holds its key and certificate."""
    files = issue(directory, name, host or (), client=client, days=days)
    typer.echo(f"ssl.keystore.location: {files.keystore}\nssl.truststore.location: {files.truststore}")
