data "aws_iam_policy_document" "ingest" {
  statement {
    effect    = "Allow"
    actions   = ["s3:*"]
    resources = ["arn:aws:s3:::b/*"]
  }

  dynamic "statement" {
    for_each = [1]
    content {
      actions   = ["s3:Delete*"]
      resources = ["arn:aws:s3:::b/*"]
    }
  }
}
