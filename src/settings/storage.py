"""Where files are kept in production: S3-compatible object storage, named by its bucket."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from cardvault.settings.declaring import SettingsError, field_setting, read, required, setting
from cardvault.settings.kinds import FLAG, HTTP_URL, TEXT


@dataclasses.dataclass(frozen=True)
class S3Settings:
    """The S3-compatible object storage that keeps files in production."""

    bucket: str = dataclasses.field(
        metadata=required(
            "CARDVAULT_S3_BUCKET",
            TEXT,
            None,
            "keep files in this bucket of S3-compatible storage; unset: on local disk in the data "
            "dir (the other `CARDVAULT_S3_` settings are read only with a bucket)",
        )
    )
    endpoint_url: str | None = dataclasses.field(  # None: AWS S3 itself
        metadata=required(
            "CARDVAULT_S3_ENDPOINT_URL",
            HTTP_URL,
            None,
            "the S3-compatible service's URL (`https://s3.example.com`); clients reach it under "
            "this name through presigned URLs",
            shown="AWS S3",
        )
    )
    region: str = dataclasses.field(
        metadata=required("CARDVAULT_S3_REGION", TEXT, "us-east-1", "the bucket's region")
    )
    access_key_id: str | None = setting(  # None: boto3's own chain
        "CARDVAULT_S3_ACCESS_KEY_ID",
        TEXT,
        None,
        "the access key's id (set both or neither: without them boto3 reads its usual environment, "
        "files and instance roles)",
        shown="boto3's own chain",
        secret=True,
    )
    secret_access_key: str | None = setting(
        "CARDVAULT_S3_SECRET_ACCESS_KEY",
        TEXT,
        None,
        "the access key's secret (with `CARDVAULT_S3_ACCESS_KEY_ID`)",
        shown="boto3's own chain",
        secret=True,
    )
    # The bucket in the path (most S3-compatible servers), not the host name.
    path_style: bool = setting(
        "CARDVAULT_S3_PATH_STYLE",
        FLAG,
        False,
        "put the bucket in the path (`host/bucket/key`), as most S3-compatible servers want, "
        "rather than in the host name",
        shown="`true` with an endpoint URL, else `false`",
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> S3Settings | None:
        """The storage's settings, or None (files on local disk) while no bucket is named."""
        if field_setting(cls, "bucket").read(env) is None:
            return None
        values, unset = read(cls, env)
        if (values["access_key_id"] is None) != (values["secret_access_key"] is None):
            raise SettingsError("CARDVAULT_S3_ACCESS_KEY_ID and CARDVAULT_S3_SECRET_ACCESS_KEY go together")
        if "path_style" in unset:
            values["path_style"] = values["endpoint_url"] is not None
        return cls(**values)
