data "aws_iam_policy_document" "ingest" {
  statement {
    not_actions = ["s3:PutBucketPolicy"]
    resources   = ["*"]
  }
}
