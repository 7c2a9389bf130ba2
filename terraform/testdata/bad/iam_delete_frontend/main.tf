data "aws_iam_policy_document" "frontend" {
  statement {
    actions   = ["s3:GetObject", "s3:DeleteObject"]
    resources = ["arn:aws:s3:::b/*"]
  }
}
