# The launch template of a Sediment role: an instance that copies the
# binary from S3 with its instance role, then runs `sediment -target=<role>` under systemd with the given
# flags, its private IP announced as -node.address.

locals {
  user_data = templatefile("${path.module}/sediment.sh.tftpl", {
    role        = var.role
    binary_uri  = var.sediment_binary_s3_uri
    binary_sha  = var.sediment_binary_sha256 == null ? "" : var.sediment_binary_sha256
    flags       = var.flags
    node_port   = var.node_port
    boot_script = var.boot_script
  })
}

resource "aws_launch_template" "this" {
  name                   = var.name
  image_id               = var.ami_id
  instance_type          = var.instance_type
  vpc_security_group_ids = var.security_group_ids
  user_data              = base64encode(local.user_data)
  update_default_version = true

  iam_instance_profile {
    name = var.instance_profile_name
  }

  metadata_options {
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }

  block_device_mappings {
    device_name = "/dev/xvda"

    ebs {
      volume_type           = "gp3"
      volume_size           = var.root_volume_size_gib
      encrypted             = true
      kms_key_id            = var.kms_key_arn
      delete_on_termination = true
    }
  }

  tag_specifications {
    resource_type = "instance"
    tags          = merge(var.tags, { Name = var.name, "sediment:role" = var.role })
  }

  tag_specifications {
    resource_type = "volume"
    tags          = merge(var.tags, { Name = var.name, "sediment:role" = var.role })
  }

  tags = var.tags
}
