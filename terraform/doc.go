// Package terraform holds Sediment's Terraform modules for AWS and the Go
// test that checks their structure; it has no Go API.
//
// The modules live under modules/ and are composed by examples/aws:
//
//	modules/network    VPC (given or created), private subnets, security groups
//	modules/bucket     S3 bucket: encryption, public access block, lifecycle
//	modules/iam        least-privilege roles and instance profiles per role
//	modules/nats       JetStream cluster of three on EC2 with EBS volumes
//	modules/launch     launch template that runs `sediment -target=<role>`
//	modules/ingest     one Auto Scaling group of one per node, with its volume
//	modules/frontend   Auto Scaling group behind a network load balancer on 9042
//	modules/compactor  Auto Scaling group scaling on the compaction backlog
//
// The test parses every .tf file with hcl/v2 (no provider needed) and
// rejects, with the file and line:
//
//   - a variable without a type or a description, an output without a
//     description, a variable default that holds 0.0.0.0/0 or ::/0;
//   - a module source that is not a directory of .tf files in this tree;
//   - a templatefile or file call on a missing file, or a template that
//     uses a variable the call does not pass;
//   - data at rest without encryption: an aws_s3_bucket without an
//     aws_s3_bucket_server_side_encryption_configuration naming it, an
//     aws_ebs_volume, root_block_device, ebs_block_device or launch
//     template ebs block without encrypted = true;
//   - ingress from 0.0.0.0/0 or ::/0, except to port 9042 alone and only
//     as a branch of a conditional on a variable (opened on request);
//   - an IAM grant of s3:DeleteObject (or a wildcard covering it) outside
//     a block whose name contains "compactor".
//
// testdata/bad holds one broken configuration per rule, which the test
// requires the checker to reject.
package terraform
