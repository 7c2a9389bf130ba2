# A JetStream cluster of three NATS servers on fixed instances.
#
# Each server has a fixed private IP, held by a network interface that
# outlives the instance (no other instance can take the address meanwhile),
# and its own encrypted EBS volume for the JetStream store. Fixed IPs keep the route list in every server's
# configuration valid for the cluster's life; EC2's automatic recovery moves
# an instance off failed hardware with its ID, IP and volumes, so the server
# comes back with its state and its peers find it where they left it. An
# instance lost for good is recreated by the next apply, with the same IP
# and its volume attached again (the volume is a separate resource).

locals {
  servers = 3
  tags    = merge(var.tags, { "sediment:cluster" = var.name, "sediment:role" = "nats" })
  nodes = [for i in range(local.servers) : {
    name   = "${var.name}-nats-${i}"
    subnet = var.subnets[i % length(var.subnets)]
    ip     = cidrhost(var.subnets[i % length(var.subnets)].cidr_block, var.host_number + i)
  }]
  routes = [for n in local.nodes : "nats-route://${n.ip}:6222"]
}

resource "aws_ebs_volume" "jetstream" {
  count             = local.servers
  availability_zone = local.nodes[count.index].subnet.availability_zone
  size              = var.volume_size_gib
  type              = var.volume_type
  iops              = var.volume_type == "io2" ? 3000 : null
  encrypted         = true
  kms_key_id        = var.kms_key_arn
  tags              = merge(local.tags, { Name = "${local.nodes[count.index].name}-jetstream" })
}

resource "aws_network_interface" "server" {
  count           = local.servers
  subnet_id       = local.nodes[count.index].subnet.id
  private_ips     = [local.nodes[count.index].ip]
  security_groups = [var.security_group_id]
  tags            = merge(local.tags, { Name = local.nodes[count.index].name })
}

resource "aws_instance" "server" {
  count                = local.servers
  ami                  = var.ami_id
  instance_type        = var.instance_type
  iam_instance_profile = var.instance_profile_name

  network_interface {
    network_interface_id = aws_network_interface.server[count.index].id
    device_index         = 0
  }

  user_data = templatefile("${path.module}/user_data.sh.tftpl", {
    server_name     = local.nodes[count.index].name
    cluster_name    = var.name
    routes          = local.routes
    volume_id       = aws_ebs_volume.jetstream[count.index].id
    nats_server_uri = var.nats_server_s3_uri
  })

  metadata_options {
    http_tokens = "required"
  }

  maintenance_options {
    auto_recovery = "default"
  }

  root_block_device {
    volume_type = "gp3"
    volume_size = 16
    encrypted   = true
    kms_key_id  = var.kms_key_arn
    tags        = merge(local.tags, { Name = "${local.nodes[count.index].name}-root" })
  }

  tags = merge(local.tags, { Name = local.nodes[count.index].name })

  lifecycle {
    # A new AMI must not replace a running server behind the cluster's back:
    # roll servers one at a time with -replace.
    ignore_changes = [ami, user_data]
  }
}

resource "aws_volume_attachment" "jetstream" {
  count       = local.servers
  device_name = "/dev/sdf"
  volume_id   = aws_ebs_volume.jetstream[count.index].id
  instance_id = aws_instance.server[count.index].id
}
