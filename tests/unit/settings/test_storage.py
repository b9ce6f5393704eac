"""The settings of S3 storage."""

from pathlib import Path

from cardvault.settings import Settings


def test_files_go_to_s3_only_when_a_bucket_is_named(tmp_path: Path) -> None:
    assert Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path)}).s3 is None
    s3 = Settings.from_env(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_S3_BUCKET": "files",
            "CARDVAULT_S3_ENDPOINT_URL": "https://s3.example.com",
        }
    ).s3
    assert s3 is not None
    assert (s3.bucket, s3.region, s3.path_style, s3.access_key_id) == ("files", "us-east-1", True, None)
    aws = Settings.from_env({"CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_S3_BUCKET": "files"}).s3
    assert aws is not None and (aws.endpoint_url, aws.path_style) == (None, False)
