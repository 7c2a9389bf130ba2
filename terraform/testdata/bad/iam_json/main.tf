resource "aws_iam_role_policy" "reader" {
  role = "reader"
  policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Action = ["s3:GetObject", "s3:DeleteObject"], Resource = "*" }]
  })
}
