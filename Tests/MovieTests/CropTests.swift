// The crop a movie's and the live stream's converter takes before scaling: 1/zoom of each
// side, about the centre asked for, stopped at the frame's edge, on even pixels (4:2:0).

import CameraCore
@testable import Movie
import Testing

@Suite struct CropTests {
    @Test func aCropAboutAPointStopsAtTheEdge() {
        #expect(PictureConverter.crop(width: 640, height: 480, zoom: 1, center: Point(x: 0, y: 0)) == (0, 0, 640, 480))
        #expect(PictureConverter.crop(width: 640, height: 480, zoom: 2) == (160, 120, 320, 240))
        #expect(PictureConverter.crop(width: 640, height: 480, zoom: 2, center: Point(x: 0, y: 0)) == (0, 0, 320, 240))
        #expect(PictureConverter.crop(width: 640, height: 480, zoom: 2, center: Point(x: 1, y: 1)) == (320, 240, 320, 240))
        #expect(PictureConverter.crop(width: 640, height: 480, zoom: 4, center: Point(x: 0.3, y: 0.75)) == (112, 300, 160, 120))
        let odd = PictureConverter.crop(width: 640, height: 480, zoom: 3, center: Point(x: 0.61, y: 0.37))
        #expect(odd.x % 2 == 0 && odd.y % 2 == 0 && odd.x + odd.width <= 640 && odd.y + odd.height <= 480, "\(odd)")
    }
}
