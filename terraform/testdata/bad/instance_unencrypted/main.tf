resource "aws_instance" "a" {
  ami           = "ami-1"
  instance_type = "t3.micro"
}

resource "aws_instance" "b" {
  ami           = "ami-1"
  instance_type = "t3.micro"

  root_block_device {
    volume_size = 20
  }

  ebs_block_device {
    device_name = "/dev/sdf"
    encrypted   = false
  }
}
