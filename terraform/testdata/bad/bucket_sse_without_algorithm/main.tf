resource "aws_s3_bucket" "data" {
  bucket = "data"
}

resource "aws_s3_bucket_server_side_encryption_configuration" "data" {
  bucket = aws_s3_bucket.data.id

  rule {
    bucket_key_enabled = true
  }
}
