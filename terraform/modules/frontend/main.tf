# Stateless CQL frontends: an Auto Scaling group behind a network load
# balancer on 9042, sized by a target tracking policy on average CPU.
# The load balancer checks /ready, so an instance gets connections only
# once it has loaded the schema and found the ingest nodes.

locals {
  tags = merge(var.tags, { "sediment:cluster" = var.name, "sediment:role" = "frontend" })
  flags = merge(var.flags, {
    "cql.listen-address"  = "0.0.0.0:9042"
    "http.listen-address" = "0.0.0.0:9180"
    "cache.memory-bytes"  = tostring(var.cache_memory_bytes)
    # The disk cache lives under -data.dir on the root volume, which is
    # sized to hold it (root_volume_size_gib below).
    "cache.disk-bytes" = tostring(var.cache_disk_gib * 1073741824)
  }, var.extra_flags)
}

module "launch" {
  source                 = "../launch"
  name                   = "${var.name}-frontend"
  role                   = "frontend"
  ami_id                 = var.ami_id
  instance_type          = var.instance_type
  instance_profile_name  = var.instance_profile_name
  security_group_ids     = [var.security_group_id]
  sediment_binary_s3_uri = var.sediment_binary_s3_uri
  sediment_binary_sha256 = var.sediment_binary_sha256
  flags                  = local.flags
  node_port              = 9180
  root_volume_size_gib   = 20 + var.cache_disk_gib
  kms_key_arn            = var.kms_key_arn
  tags                   = local.tags
}

resource "aws_lb" "cql" {
  name                             = "${var.name}-cql"
  load_balancer_type               = "network"
  internal                         = var.internal
  subnets                          = var.lb_subnet_ids
  security_groups                  = [var.lb_security_group_id]
  enable_cross_zone_load_balancing = true
  tags                             = local.tags
}

resource "aws_lb_target_group" "cql" {
  name                 = "${var.name}-cql"
  port                 = 9042
  protocol             = "TCP"
  vpc_id               = data.aws_subnet.first.vpc_id
  target_type          = "instance"
  deregistration_delay = 30
  tags                 = local.tags

  health_check {
    protocol            = "HTTP"
    port                = "9180"
    path                = "/ready"
    interval            = 10
    healthy_threshold   = 2
    unhealthy_threshold = 2
  }
}

data "aws_subnet" "first" {
  id = var.subnets[0].id
}

resource "aws_lb_listener" "cql" {
  load_balancer_arn = aws_lb.cql.arn
  port              = 9042
  protocol          = "TCP"
  tags              = local.tags

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.cql.arn
  }
}

resource "aws_autoscaling_group" "this" {
  name                      = "${var.name}-frontend"
  min_size                  = var.min_size
  max_size                  = var.max_size
  vpc_zone_identifier       = [for s in var.subnets : s.id]
  target_group_arns         = [aws_lb_target_group.cql.arn]
  health_check_type         = "ELB"
  health_check_grace_period = 120

  launch_template {
    id      = module.launch.id
    version = module.launch.latest_version
  }

  instance_refresh {
    strategy = "Rolling"

    preferences {
      min_healthy_percentage = 90
    }
  }

  lifecycle {
    # The scaling policy owns the size between min and max.
    ignore_changes = [desired_capacity]
  }
}

resource "aws_autoscaling_policy" "cpu" {
  name                   = "${var.name}-frontend-cpu"
  autoscaling_group_name = aws_autoscaling_group.this.name
  policy_type            = "TargetTrackingScaling"

  target_tracking_configuration {
    target_value = var.target_cpu_percent

    predefined_metric_specification {
      predefined_metric_type = "ASGAverageCPUUtilization"
    }
  }
}
