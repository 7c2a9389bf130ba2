# Ingest nodes whose commitlogs survive the loss of their instance.
#
# Each node is an Auto Scaling group of exactly one instance, pinned to one
# subnet, plus an encrypted EBS volume in that subnet's zone that holds the
# node's data directory: the commitlogs and the node ID. The instance's boot
# script attaches the node's volume, waiting while a dying predecessor still
# holds it, and mounts it; the new instance then replays the commitlogs and
# comes back as the same node (same ID, same token ranges) at its new IP,
# which it announces as -node.address.
#
# An Auto Scaling group replaces a failed or unhealthy instance by itself,
# at any hour, without a Terraform run; fixed instances with an
# aws_volume_attachment would wait for an operator's apply. One group per
# node, rather than one for all, ties each volume to exactly one instance.

data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  tags = merge(var.tags, { "sediment:cluster" = var.name, "sediment:role" = "ingest" })
  nodes = { for i in range(var.node_count) : tostring(i) => {
    name   = "${var.name}-ingest-${i}"
    subnet = var.subnets[i % length(var.subnets)]
  } }
  flags = merge(var.flags, {
    "ingest.rpc-address"  = "0.0.0.0:${var.rpc_port}"
    "http.listen-address" = "0.0.0.0:9180"
  }, var.extra_flags)
}

resource "aws_ebs_volume" "commitlog" {
  for_each          = local.nodes
  availability_zone = each.value.subnet.availability_zone
  type              = "gp3"
  size              = var.volume_size_gib
  iops              = var.volume_iops
  throughput        = var.volume_throughput_mibps
  encrypted         = true
  kms_key_id        = var.kms_key_arn
  tags              = merge(local.tags, { Name = "${each.value.name}-commitlog", "sediment:node" = each.value.name })
}

module "launch" {
  source                 = "../launch"
  for_each               = local.nodes
  name                   = each.value.name
  role                   = "ingest"
  ami_id                 = var.ami_id
  instance_type          = var.instance_type
  instance_profile_name  = var.instance_profile_name
  security_group_ids     = [var.security_group_id]
  sediment_binary_s3_uri = var.sediment_binary_s3_uri
  sediment_binary_sha256 = var.sediment_binary_sha256
  flags                  = local.flags
  node_port              = var.rpc_port
  kms_key_arn            = var.kms_key_arn
  tags                   = merge(local.tags, { "sediment:node" = each.value.name })
  boot_script = templatefile("${path.module}/attach_volume.sh.tftpl", {
    volume_id = aws_ebs_volume.commitlog[each.key].id
  })
}

resource "aws_autoscaling_group" "node" {
  for_each                  = local.nodes
  name                      = each.value.name
  min_size                  = 1
  max_size                  = 1
  desired_capacity          = 1
  vpc_zone_identifier       = [each.value.subnet.id]
  health_check_type         = "EC2"
  health_check_grace_period = 300

  launch_template {
    id      = module.launch[each.key].id
    version = module.launch[each.key].latest_version
  }

  # A new launch template version (a new binary, new flags) replaces the
  # node's instance: the old one stops (flushing its memtables) before the
  # new one attaches the volume and replays the rest.
  instance_refresh {
    strategy = "Rolling"

    preferences {
      min_healthy_percentage = 0
    }
  }

  tag {
    key                 = "sediment:node"
    value               = each.value.name
    propagate_at_launch = true
  }
}

# The right to attach a node's volume, to instances of this cluster's
# ingest role only.
data "aws_iam_policy_document" "attach" {
  statement {
    sid       = "AttachCommitlogVolumes"
    actions   = ["ec2:AttachVolume"]
    resources = [for v in aws_ebs_volume.commitlog : "arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:volume/${v.id}"]
  }

  statement {
    sid       = "AttachToIngestInstances"
    actions   = ["ec2:AttachVolume"]
    resources = ["arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:instance/*"]

    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/sediment:cluster"
      values   = [var.name]
    }

    condition {
      test     = "StringEquals"
      variable = "aws:ResourceTag/sediment:role"
      values   = ["ingest"]
    }
  }

  statement {
    sid       = "DescribeVolumes"
    actions   = ["ec2:DescribeVolumes"]
    resources = ["*"]
  }
}

resource "aws_iam_role_policy" "attach" {
  name   = "attach-commitlog-volume"
  role   = var.iam_role_name
  policy = data.aws_iam_policy_document.attach.json
}
