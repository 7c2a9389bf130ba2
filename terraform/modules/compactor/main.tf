# Compactors that scale on the compaction backlog.
#
# The queue gauges are exported by every compactor on /metrics (they read
# the JetStream work queue, so every process reports the same values):
#
#   sediment_compaction_queued_jobs             jobs waiting or running
#   sediment_compaction_queued_bytes            input bytes of those jobs
#   sediment_compaction_oldest_job_age_seconds  age of the oldest job
#
# The CloudWatch agent on each compactor scrapes its /metrics every 30 s
# (the agent's Prometheus support) and publishes these three, with the
# dimension cluster=<name>, in the embedded metric format through a log
# group; CloudWatch turns them into metrics of var.metric_namespace.
# Because each instance publishes the same value, the policies read the
# Maximum over them:
#
#   * target tracking on queued jobs per in-service compactor;
#   * target tracking on queued bytes per in-service compactor;
#   * a step policy adding compactors while the oldest job is too old.
#
# With several target tracking policies, the group scales out when any asks
# and in only when all agree.

data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  tags      = merge(var.tags, { "sediment:cluster" = var.name, "sediment:role" = "compactor" })
  asg_name  = "${var.name}-compactor"
  log_group = "/sediment/${var.name}/compactor-metrics"
  flags = merge(var.flags, {
    "http.listen-address" = "0.0.0.0:9180"
  }, var.extra_flags)
  dimensions = { cluster = var.name }
}

resource "aws_cloudwatch_log_group" "metrics" {
  name              = local.log_group
  retention_in_days = var.log_retention_days
  tags              = local.tags
}

module "launch" {
  source                 = "../launch"
  name                   = local.asg_name
  role                   = "compactor"
  ami_id                 = var.ami_id
  instance_type          = var.instance_type
  instance_profile_name  = var.instance_profile_name
  security_group_ids     = [var.security_group_id]
  sediment_binary_s3_uri = var.sediment_binary_s3_uri
  sediment_binary_sha256 = var.sediment_binary_sha256
  flags                  = local.flags
  node_port              = 9180
  kms_key_arn            = var.kms_key_arn
  tags                   = local.tags
  boot_script = templatefile("${path.module}/cloudwatch_agent.sh.tftpl", {
    cluster   = var.name
    log_group = local.log_group
    namespace = var.metric_namespace
  })
}

resource "aws_autoscaling_group" "this" {
  name                      = local.asg_name
  min_size                  = var.min_size
  max_size                  = var.max_size
  vpc_zone_identifier       = [for s in var.subnets : s.id]
  health_check_type         = "EC2"
  health_check_grace_period = 120
  # GroupInServiceInstances is the divisor of the per-worker metrics.
  enabled_metrics = ["GroupInServiceInstances"]

  launch_template {
    id      = module.launch.id
    version = module.launch.latest_version
  }

  # A new launch template version rolls over the compactors, half at a
  # time: a job cut short is redelivered to another worker.
  instance_refresh {
    strategy = "Rolling"

    preferences {
      min_healthy_percentage = 50
    }
  }

  lifecycle {
    ignore_changes = [desired_capacity]
  }
}

resource "aws_autoscaling_policy" "queued_jobs" {
  name                   = "${local.asg_name}-queued-jobs"
  autoscaling_group_name = aws_autoscaling_group.this.name
  policy_type            = "TargetTrackingScaling"

  target_tracking_configuration {
    target_value = var.target_queued_jobs_per_worker

    customized_metric_specification {
      metrics {
        id          = "backlog"
        return_data = false

        metric_stat {
          stat = "Maximum"

          metric {
            namespace   = var.metric_namespace
            metric_name = "sediment_compaction_queued_jobs"

            dimensions {
              name  = "cluster"
              value = var.name
            }
          }
        }
      }

      metrics {
        id          = "workers"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = "AWS/AutoScaling"
            metric_name = "GroupInServiceInstances"

            dimensions {
              name  = "AutoScalingGroupName"
              value = aws_autoscaling_group.this.name
            }
          }
        }
      }

      metrics {
        id          = "per_worker"
        label       = "Queued compaction jobs per compactor"
        expression  = "backlog / workers"
        return_data = true
      }
    }
  }
}

resource "aws_autoscaling_policy" "queued_bytes" {
  name                   = "${local.asg_name}-queued-bytes"
  autoscaling_group_name = aws_autoscaling_group.this.name
  policy_type            = "TargetTrackingScaling"

  target_tracking_configuration {
    target_value = var.target_queued_bytes_per_worker

    customized_metric_specification {
      metrics {
        id          = "backlog"
        return_data = false

        metric_stat {
          stat = "Maximum"

          metric {
            namespace   = var.metric_namespace
            metric_name = "sediment_compaction_queued_bytes"

            dimensions {
              name  = "cluster"
              value = var.name
            }
          }
        }
      }

      metrics {
        id          = "workers"
        return_data = false

        metric_stat {
          stat = "Average"

          metric {
            namespace   = "AWS/AutoScaling"
            metric_name = "GroupInServiceInstances"

            dimensions {
              name  = "AutoScalingGroupName"
              value = aws_autoscaling_group.this.name
            }
          }
        }
      }

      metrics {
        id          = "per_worker"
        label       = "Queued compaction bytes per compactor"
        expression  = "backlog / workers"
        return_data = true
      }
    }
  }
}

resource "aws_autoscaling_policy" "oldest_job" {
  name                      = "${local.asg_name}-oldest-job"
  autoscaling_group_name    = aws_autoscaling_group.this.name
  policy_type               = "StepScaling"
  adjustment_type           = "ChangeInCapacity"
  estimated_instance_warmup = 120

  step_adjustment {
    metric_interval_lower_bound = 0
    metric_interval_upper_bound = var.max_oldest_job_age_seconds
    scaling_adjustment          = 1
  }

  step_adjustment {
    metric_interval_lower_bound = var.max_oldest_job_age_seconds
    scaling_adjustment          = 2
  }
}

resource "aws_cloudwatch_metric_alarm" "oldest_job" {
  alarm_name          = "${local.asg_name}-oldest-job"
  alarm_description   = "The oldest compaction job of ${var.name} has waited longer than ${var.max_oldest_job_age_seconds} s."
  namespace           = var.metric_namespace
  metric_name         = "sediment_compaction_oldest_job_age_seconds"
  dimensions          = local.dimensions
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 3
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.max_oldest_job_age_seconds
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_autoscaling_policy.oldest_job.arn]
  tags                = local.tags
}

# Publishing the metrics: the agent writes them to its log group.
data "aws_iam_policy_document" "metrics" {
  statement {
    sid       = "PublishBacklogMetrics"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]
    resources = ["${aws_cloudwatch_log_group.metrics.arn}:*"]
  }

  statement {
    sid       = "DescribeLogGroups"
    actions   = ["logs:DescribeLogGroups"]
    resources = ["arn:${data.aws_partition.current.partition}:logs:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:log-group:*"]
  }
}

resource "aws_iam_role_policy" "metrics" {
  name   = "publish-backlog-metrics"
  role   = var.iam_role_name
  policy = data.aws_iam_policy_document.metrics.json
}

# Alarms on the cluster's health, from the compactors' view of the catalog
# (every compactor publishes the same values: the alarms read the Maximum).
# Missing data (no compactor running) breaches: nothing would watch the
# cluster then.
resource "aws_cloudwatch_metric_alarm" "stale_members" {
  for_each            = toset(["ingest", "frontend", "compactor"])
  alarm_name          = "${var.name}-stale-${each.key}-members"
  alarm_description   = "A ${each.key} member of ${var.name} has not renewed its heartbeat for 5 minutes: crashed, or cut off from NATS. sediment admin status names it."
  namespace           = var.metric_namespace
  metric_name         = "sediment_cluster_stale_members"
  dimensions          = merge(local.dimensions, { role = each.key })
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "breaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "unserved_ranges" {
  for_each = {
    unowned     = { metric = "sediment_cluster_unowned_ranges", what = "no ingest node owns" }
    stale-owner = { metric = "sediment_cluster_stale_owner_ranges", what = "have a stale or departed owner" }
  }
  alarm_name          = "${var.name}-${each.key}-ranges"
  alarm_description   = "Token ranges of ${var.name} ${each.value.what}: their writes fail."
  namespace           = var.metric_namespace
  metric_name         = each.value.metric
  dimensions          = local.dimensions
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 2
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "breaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "compaction_lag" {
  alarm_name          = "${var.name}-compaction-lag"
  alarm_description   = "The oldest compaction job of ${var.name} has waited more than ${var.compaction_lag_alarm_seconds} s although the group scales on it: compactors are at max_size or failing."
  namespace           = var.metric_namespace
  metric_name         = "sediment_compaction_oldest_job_age_seconds"
  dimensions          = local.dimensions
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  comparison_operator = "GreaterThanThreshold"
  threshold           = var.compaction_lag_alarm_seconds
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
}
