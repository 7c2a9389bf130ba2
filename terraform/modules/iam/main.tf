# One role per Sediment role, each with only the bucket access its code
# paths use, all confined to the cluster's prefix:
#
#   role        List  Get  Put              AbortMultipartUpload  Delete
#   frontend     x     x   manifest/ only
#   ingest       x     x   x                x
#   compactor    x     x   x                x                     x
#
#   nats              Get releases/ only: the nats-server tarball
#
# Every Sediment role reads releases/ too (the binaries its instances copy
# at boot): it lies under the prefix they read.
#
# Frontends put only the manifest's archive copies (manifest/...), written
# when they commit schema and role changes (DDL). Only compactors delete:
# the garbage collector runs in the compactor role, and nothing else ever
# removes an object.

data "aws_partition" "current" {}

locals {
  roles       = toset(["frontend", "ingest", "compactor"])
  key_prefix  = var.prefix == "" ? "" : "${var.prefix}/"
  objects_arn = "${var.bucket_arn}/${local.key_prefix}*"
  list_like   = var.prefix == "" ? ["*"] : ["${var.prefix}/*", var.prefix]
}

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "this" {
  for_each           = local.roles
  name               = "${var.name}-${each.key}"
  description        = "Sediment ${each.key} instances of ${var.name}"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

resource "aws_iam_instance_profile" "this" {
  for_each = local.roles
  name     = "${var.name}-${each.key}"
  role     = aws_iam_role.this[each.key].name
  tags     = var.tags
}

resource "aws_iam_role_policy_attachment" "ssm" {
  for_each   = var.ssm_access ? local.roles : toset([])
  role       = aws_iam_role.this[each.key].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"
}

data "aws_iam_policy_document" "frontend" {
  statement {
    sid       = "List"
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = local.list_like
    }
  }

  statement {
    sid       = "Read"
    actions   = ["s3:GetObject"]
    resources = [local.objects_arn]
  }

  statement {
    sid       = "ArchiveManifest"
    actions   = ["s3:PutObject"]
    resources = ["${var.bucket_arn}/${local.key_prefix}manifest/*"]
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "Key"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

data "aws_iam_policy_document" "ingest" {
  statement {
    sid       = "List"
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = local.list_like
    }
  }

  statement {
    sid       = "ReadWrite"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"]
    resources = [local.objects_arn]
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "Key"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

data "aws_iam_policy_document" "compactor" {
  statement {
    sid       = "List"
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = local.list_like
    }
  }

  statement {
    sid       = "ReadWriteDelete"
    actions   = ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"]
    resources = [local.objects_arn]
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "Key"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role_policy" "frontend" {
  name   = "bucket"
  role   = aws_iam_role.this["frontend"].id
  policy = data.aws_iam_policy_document.frontend.json
}

resource "aws_iam_role_policy" "ingest" {
  name   = "bucket"
  role   = aws_iam_role.this["ingest"].id
  policy = data.aws_iam_policy_document.ingest.json
}

resource "aws_iam_role_policy" "compactor" {
  name   = "bucket"
  role   = aws_iam_role.this["compactor"].id
  policy = data.aws_iam_policy_document.compactor.json
}

# The NATS servers' role: they copy the nats-server tarball from the
# bucket's releases/ at boot, and touch nothing else.
resource "aws_iam_role" "nats" {
  name               = "${var.name}-nats"
  description        = "NATS servers of ${var.name}"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

resource "aws_iam_instance_profile" "nats" {
  name = "${var.name}-nats"
  role = aws_iam_role.nats.name
  tags = var.tags
}

resource "aws_iam_role_policy_attachment" "nats_ssm" {
  count      = var.ssm_access ? 1 : 0
  role       = aws_iam_role.nats.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"
}

data "aws_iam_policy_document" "nats" {
  statement {
    sid       = "Releases"
    actions   = ["s3:GetObject"]
    resources = ["${var.bucket_arn}/${local.key_prefix}releases/*"]
  }

  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "Decrypt"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role_policy" "nats" {
  name   = "releases"
  role   = aws_iam_role.nats.id
  policy = data.aws_iam_policy_document.nats.json
}
