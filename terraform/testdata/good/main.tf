# Everything here is allowed: the checker must find nothing.

variable "cql_open" {
  description = "Open CQL to the internet."
  type        = bool
  default     = false
}

variable "cidrs" {
  description = "Who may connect."
  type        = list(string)
  default     = ["10.0.0.0/8"]
}

module "sub" {
  source = "./sub"
  name   = "x"
}

locals {
  boot = templatefile("${path.module}/boot.sh.tftpl", { role = "ingest", "ports" = [1, 2] })
}

resource "aws_vpc_security_group_ingress_rule" "cql" {
  for_each          = toset(var.cql_open ? ["0.0.0.0/0"] : var.cidrs)
  security_group_id = "sg-1"
  ip_protocol       = "tcp"
  from_port         = 9042
  to_port           = 9042
  cidr_ipv4         = each.value
}

resource "aws_security_group" "db" {
  name = "db"

  ingress {
    from_port   = 9042
    to_port     = 9042
    protocol    = "tcp"
    cidr_blocks = var.cql_open ? ["0.0.0.0/0"] : ["10.0.0.0/8"]
  }

  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

resource "aws_security_group_rule" "out" {
  type              = "egress"
  security_group_id = "sg-1"
  protocol          = "-1"
  from_port         = 0
  to_port           = 0
  cidr_blocks       = ["0.0.0.0/0"]
}

resource "aws_s3_bucket" "data" {
  bucket = "data"
}

resource "aws_s3_bucket_server_side_encryption_configuration" "data" {
  bucket = aws_s3_bucket.data.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "aws:kms"
    }
  }
}

resource "aws_ebs_volume" "a" {
  availability_zone = "us-east-1a"
  size              = 10
  encrypted         = true
}

resource "aws_instance" "a" {
  ami           = "ami-1"
  instance_type = "t3.micro"

  root_block_device {
    encrypted = true
  }
}

resource "aws_launch_template" "a" {
  image_id = "ami-1"

  block_device_mappings {
    device_name = "/dev/xvda"

    ebs {
      encrypted = true
    }
  }
}

data "aws_iam_policy_document" "tls_only" {
  statement {
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = ["*"]
  }
}

data "aws_iam_policy_document" "compactor" {
  statement {
    actions   = ["s3:GetObject", "s3:DeleteObject"]
    resources = ["arn:aws:s3:::b/*"]
  }
}

data "aws_iam_policy_document" "frontend" {
  statement {
    actions   = ["s3:GetObject", "s3:ListBucket"]
    resources = ["*"]
  }
}

output "boot" {
  description = "The boot script."
  value       = local.boot
}
