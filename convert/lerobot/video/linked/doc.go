// Package linked gives the video engine this program was built with:
// libav (convert/lerobot/video/libav) in the bpconvert-lerobot build (tag
// lerobot), none in the plain bpconvert, which then hands LeRobot
// conversions to bpconvert-lerobot. It is the one place the choice is
// made, so no other package needs a build tag for it.
package linked
