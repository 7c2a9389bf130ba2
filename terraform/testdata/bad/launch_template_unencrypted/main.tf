resource "aws_launch_template" "a" {
  image_id = "ami-1"
}

resource "aws_launch_template" "b" {
  image_id = "ami-1"

  block_device_mappings {
    device_name = "/dev/xvda"

    ebs {
      volume_size = 20
    }
  }
}
